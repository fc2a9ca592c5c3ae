function per = pktgen2x400g_design(build_dir)
% PKTGEN2X400G_DESIGN  The two-port example design (design.yaml next to this file) written
%   with the Octave design API instead of YAML; both give the same jasper.per. From the
%   repository:
%     octave-cli --eval "addpath('xps_library', 'casper400g_dev/octave', ...
%                       'examples/pktgen2x400g'); pktgen2x400g_design('build/pktgen2x400g')"
%     casper400g build build/pktgen2x400g/jasper.per -o build/pktgen2x400g
if nargin < 1
  build_dir = fullfile('build', 'pktgen2x400g');
end
here = fileparts(mfilename('fullpath'));
d = fhg_design('pktgen2x400g', 'generic400g', 'clock_mhz', 390.625, 'base_dir', here);
% A block per cage, each on a subnet of its own.
for k = 0:1
  d = fhg_design_add_block(d, sprintf('gbe%d', k), 'fourhundred_gbe', 'port', k, ...
        'fab_mac', sprintf('02:00:0a:00:%02x:0a', k), 'fab_ip', sprintf('10.0.%d.10', k), ...
        'fab_udp', 7148, 'fab_gate', sprintf('10.0.%d.1', k), ...
        'fab_netmask', '255.255.255.0', 'fab_en', 0);
end
% Each generator's registers: examples/pktgen_400g's names behind the prefix p<k>_.
from_cpu = {'pkt_ctrl', 0; 'pkt_period', 0; 'pkt_size', 8192; 'pkt_count', 0; ...
            'pkt_dest_ip', -1; 'pkt_dest_port', 7148; 'pkt_mode', 0; ...
            'tone_step', hex2dec('28000000'); 'tone_shape', hex2dec('00010400'); ...
            'spead_ctrl', 0; 'spead_channel', 0; 'spead_ts_step', 4096; ...
            'dest_tbl_ip', 0; 'dest_tbl_port', 0; 'dest_tbl_count', 0; 'dest_tbl_ctrl', 0};
to_cpu = {'pkt_sent', 'dest_tbl_status', 'dest_tbl_switch', 'dest_tbl_sent'};
% Generator port of each register where the names differ (the rest: the same name).
gen_port = struct('pkt_ctrl', 'ctrl', 'pkt_period', 'period', 'pkt_size', 'size', ...
                  'pkt_count', 'count', 'pkt_dest_ip', 'dest_ip', 'pkt_dest_port', 'dest_port', ...
                  'pkt_mode', 'mode', 'pkt_sent', 'sent');
gbe_ports = {'tx_data', 'tx_valid', 'tx_byte_enable', 'tx_dest_ip', 'tx_dest_port', ...
             'tx_end_of_frame', 'tx_afull', 'tx_overflow'};
ports = cell(0, 2);
for k = 0:1
  p = sprintf('p%d_', k);
  for r = 1:size(from_cpu, 1)
    init = from_cpu{r, 2};
    if init < 0  % the generator's default destination: 10.0.<k>.20
      init = hex2dec('0a000014') + k * 256;
    end
    d = fhg_design_add_block(d, [p from_cpu{r, 1}], 'sw_reg', 'io_dir', 'From Processor', ...
                             'init_val', init);
  end
  for r = 1:numel(to_cpu)
    d = fhg_design_add_block(d, [p to_cpu{r}], 'sw_reg', 'io_dir', 'To Processor');
  end
  for r = 1:size(from_cpu, 1)
    ports(end + 1, :) = {[p port_of(gen_port, from_cpu{r, 1})], ...
                         [p from_cpu{r, 1} '/user_data_out']}; %#ok<AGROW>
  end
  for r = 1:numel(to_cpu)
    ports(end + 1, :) = {[p port_of(gen_port, to_cpu{r})], [p to_cpu{r} '/user_data_in']}; %#ok<AGROW>
  end
  ports(end + 1, :) = {[p 'gbe_rst'], sprintf('gbe%d/rst', k)}; %#ok<AGROW>
  for r = 1:numel(gbe_ports)
    ports(end + 1, :) = {[p gbe_ports{r}], sprintf('gbe%d/%s', k, gbe_ports{r})}; %#ok<AGROW>
  end
end
d = fhg_design_user_module(d, 'fhg_pktgen_2port', ...
      {'fhg_pktgen_2port.sv', '../pktgen_400g/fhg_pktgen.sv', ...
       '../pktgen_400g/fhg_pktgen_spead.sv', '../pktgen_400g/fhg_tone_gen.sv', ...
       '../pktgen_400g/fhg_dest_table.sv'}, ports, 'clock', 'clk', ...
      'parameters', {'STREAM_ID0', 1, 'STREAM_ID1', 2});
per = fhg_design_write(d, build_dir);
fprintf('wrote %s\n', per);
end

function name = port_of(map, reg)
% The generator's port for register `reg`.
if isfield(map, reg)
  name = map.(reg);
else
  name = reg;
end
end
