function values = fourhundred_gbe_mask(blk)
% FOURHUNDRED_GBE_MASK  Mask initialisation of the xps:fourhundred_gbe block:
%   fourhundred_gbe_mask(gcb) checks every mask parameter (the same rules as the yellow
%   block's design rule check, from the same description) and renames the block's Xilinx
%   gateways to <model>_<block>_<port>, the names the toolflow wires the core to.
%   Returns the parameters as numbers (flags as logical).
%   The checks and names are plain functions (fourhundred_gbe_check_param,
%   fourhundred_gbe_gateway_name, fourhundred_gbe_port_of_gateway); only this file and
%   fourhundred_gbe_callback call Simulink.
d = fourhundred_gbe_interface();
values = struct();
for k = 1:numel(d.parameters)
  spec = d.parameters(k);
  text = get_param(blk, spec.name);
  try
    values.(spec.name) = fourhundred_gbe_check_param(spec.name, text, spec);
  catch err
    error('fourhundred_gbe:mask', '%s: %s (%s)', blk, err.message, spec.prompt);
  end
end
ports = {d.ports.name};
gws = [find_system(blk, 'SearchDepth', 1, 'LookUnderMasks', 'all', 'FollowLinks', 'on', ...
                   'MaskType', 'Xilinx Gateway In Block'); ...
       find_system(blk, 'SearchDepth', 1, 'LookUnderMasks', 'all', 'FollowLinks', 'on', ...
                   'MaskType', 'Xilinx Gateway Out Block')];
seen = {};
for k = 1:numel(gws)
  name = get_param(gws{k}, 'Name');
  port = fourhundred_gbe_port_of_gateway(name, ports);
  if isempty(port)
    error('fourhundred_gbe:mask', ['%s: gateway %s inside the block belongs to no port ' ...
          'of the core; rebuild the block (build_fourhundred_gbe)'], blk, name);
  end
  if any(strcmp(seen, port))
    error('fourhundred_gbe:mask', '%s: two gateways for port %s', blk, port);
  end
  seen{end + 1} = port; %#ok<AGROW>
  want = fourhundred_gbe_gateway_name(blk, port);
  if ~strcmp(name, want)
    set_param(gws{k}, 'Name', want);
  end
end
missing = setdiff(ports, seen);
if ~isempty(missing)
  error('fourhundred_gbe:mask', '%s: no gateway for port(s) %s; rebuild the block', ...
        blk, strjoin(missing, ', '));
end
end
