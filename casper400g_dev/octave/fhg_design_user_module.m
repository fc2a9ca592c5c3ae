function d = fhg_design_user_module(d, module, sources, ports, varargin)
% FHG_DESIGN_USER_MODULE  The user's HDL in place of the Simulink diagram.
%   d = fhg_design_user_module(d, 'fhg_pktgen', {'fhg_pktgen.sv'}, ...
%         {'tx_data', 'gbe0/tx_data'; 'size', 'pkt_size/user_data_out'}, ...
%         'clock', 'clk', 'parameters', {'DEPTH', 4})
%   ports: {module port, '<block>/<gateway port>'; ...}; sources relative to the
%   design's base_dir. Unmapped block inputs are tied to 0 in the generated wrapper.
opts = fhg_design_options(struct('clock', 'clk', 'parameters', {{}}), varargin, ...
                          'fhg_design_user_module');
if ~iscell(sources)
  sources = {sources};
end
if ~iscell(ports) || size(ports, 2) ~= 2
  error('fhg_design:user_module', 'user_module: ports must be {module port, ''block/port''; ...}');
end
d.user_module = struct('module', module, 'sources', {sources}, 'ports', {ports}, ...
                       'clock', opts.clock, 'parameters', {opts.parameters});
end
