function d = fhg_design_add_block(d, name, type, varargin)
% FHG_DESIGN_ADD_BLOCK  Adds a yellow block with mask parameters (name/value pairs).
%   d = fhg_design_add_block(d, 'gbe0', 'fourhundred_gbe', 'port', 0, 'fab_ip', '10.0.0.10')
%   d = fhg_design_add_block(d, 'pkt_size', 'sw_reg', 'io_dir', 'From Processor', 'init_val', 8192)
%   Parameters not given take the block's defaults. Unknown types and keys are refused;
%   the 400GbE block's values are checked as its mask and yellow block check them.
types = fhg_block_types();
where = sprintf('block %s', name);
if ~ischar(name) || isempty(regexp(name, '^[A-Za-z_][A-Za-z0-9_]*$', 'once'))
  error('fhg_design:block', 'block name %s is not an identifier', fourhundred_gbe_repr(name));
end
for k = 1:numel(d.blocks)
  if strcmp(d.blocks{k}.name, name)
    error('fhg_design:block', '%s: a block of that name already exists', where);
  end
end
if ~ischar(type) || ~isfield(types, type)
  error('fhg_design:block', '%s: unknown block type %s; known: %s', where, ...
        fourhundred_gbe_repr(type), strjoin(fieldnames(types)', ', '));
end
t = types.(type);
params = t.defaults;
if mod(numel(varargin), 2) ~= 0
  error('fhg_design:block', '%s: parameters come in name/value pairs', where);
end
for k = 1:2:numel(varargin)
  key = varargin{k};
  row = find(strcmp(params(:, 1), key));
  if isempty(row)
    error('fhg_design:block', '%s: unknown key %s; known keys: %s', where, ...
          fourhundred_gbe_repr(key), strjoin(params(:, 1)', ', '));
  end
  params{row, 2} = varargin{k + 1};
end
if strcmp(type, 'fourhundred_gbe')
  for k = 1:size(params, 1)
    try
      fourhundred_gbe_check_param(params{k, 1}, params{k, 2});
    catch err
      error('fhg_design:block', '%s (xps:fourhundred_gbe): %s', where, err.message);
    end
  end
end
gws = fhg_design_gateways(t, params, where);
d.blocks{end + 1} = struct('name', name, 'type', type, 'params', {params}, 'gateways', {gws});
end
