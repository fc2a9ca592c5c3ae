function blk = build_fourhundred_gbe(out_dir)
% BUILD_FOURHUNDRED_GBE  Creates the xps:fourhundred_gbe library block with the Simulink
%   API and saves it as <out_dir>/fourhundred_gbe.slx (default: this folder), where
%   xps_build_new_library collects it. Run once after installing the block into an
%   mlib_devel checkout (`casper400g install-mlib-devel`), with xps_library on the path.
%
%   The block is a masked subsystem: each user port of the core (fourhundred_gbe_interface,
%   generated from the yellow block's description) is an In/Out port joined to a Xilinx
%   gateway named <model>_<block>_<port> (fourhundred_gbe_mask renames them when the
%   block is placed or renamed). Block inputs go In -> Gateway Out -> Terminator; block
%   outputs Constant (simulation value 0) -> Gateway In (Boolean for 1 bit, otherwise
%   Unsigned <width>.0) -> Out.
if nargin < 1 || isempty(out_dir)
  out_dir = fileparts(mfilename('fullpath'));
end
d = fourhundred_gbe_interface();
sys = 'fourhundred_gbe';
new_system(sys, 'Library');
blk = [sys '/' sys];
add_block('built-in/Subsystem', blk, 'Position', [100 100 300 100 + 20 * numel(d.ports)]);
n_in = 0;
n_out = 0;
for k = 1:numel(d.ports)
  p = d.ports(k);
  gw = [blk '/' fourhundred_gbe_gateway_name(blk, p.name)];
  y = 30 * k;
  if strcmp(p.dir, 'in')
    n_in = n_in + 1;
    add_block('simulink/Sources/In1', [blk '/' p.name], 'Port', sprintf('%d', n_in), ...
              'Position', [20 y 50 y + 14]);
    add_block('xbsIndex_r4/Gateway Out', gw, 'hdl_port', 'on', 'Position', [150 y 250 y + 14]);
    add_block('simulink/Sinks/Terminator', [blk '/' p.name '_term'], ...
              'Position', [300 y 320 y + 14]);
    add_line(blk, [p.name '/1'], [get_name(gw) '/1']);
    add_line(blk, [get_name(gw) '/1'], [p.name '_term/1']);
  else
    n_out = n_out + 1;
    if p.width == 1
      arith = 'Boolean';
    else
      arith = 'Unsigned';
    end
    add_block('simulink/Sources/Constant', [blk '/' p.name '_sim'], 'Value', '0', ...
              'Position', [20 y 50 y + 14]);
    add_block('xbsIndex_r4/Gateway In', gw, 'arith_type', arith, ...
              'n_bits', sprintf('%d', p.width), 'bin_pt', '0', 'period', '1', ...
              'Position', [150 y 250 y + 14]);
    add_block('simulink/Sinks/Out1', [blk '/' p.name], 'Port', sprintf('%d', n_out), ...
              'Position', [300 y 330 y + 14]);
    add_line(blk, [p.name '_sim/1'], [get_name(gw) '/1']);
    add_line(blk, [get_name(gw) '/1'], [p.name '/1']);
  end
end
prm = d.parameters;
names = {prm.name};
vars = cell(1, numel(prm));
helps = cell(1, numel(prm));
for k = 1:numel(prm)
  % '&': literal fields; fourhundred_gbe_mask parses the text ('10.0.0.1',
  % hex2dec('...')) itself, the same way the yellow block reads jasper.per.
  vars{k} = sprintf('%s=&%d', names{k}, k);
  helps{k} = sprintf('%s (%s): %s', prm(k).prompt, names{k}, prm(k).tooltip);
end
callbacks = repmat({'fourhundred_gbe_callback(gcb)'}, 1, numel(prm));
set_param(blk, 'Tag', d.tag, 'Mask', 'on', 'MaskType', d.tag, ...
          'MaskSelfModifiable', 'on', ...
          'MaskDescription', ['400GbE UDP/IPv4 core (DCMAC) on one QSFP-DD cage. ' ...
                              'Ports as in docs/design/core.md; first byte on the wire is data[1023:1016].'], ...
          'MaskHelp', strjoin(helps, sprintf('\n')), ...
          'MaskVariables', [strjoin(vars, ';') ';'], ...
          'MaskPromptString', strjoin({prm.prompt}, '|'), ...
          'MaskStyleString', strjoin({prm.style}, ','), ...
          'MaskValueString', strjoin({prm.mask_value}, '|'), ...
          'MaskTunableValueString', strjoin(repmat({'off'}, 1, numel(prm)), ','), ...
          'MaskCallbackString', strjoin(callbacks, '|'), ...
          'MaskInitialization', 'fourhundred_gbe_mask(gcb);', ...
          'MaskIconOpaque', 'on', ...
          'MaskDisplay', sprintf('disp(''%s'')', d.icon));
fourhundred_gbe_mask(blk);
save_system(sys, fullfile(out_dir, [sys '.slx']));
close_system(sys);
end

function name = get_name(path)
name = path(find(path == '/', 1, 'last') + 1:end);
end
