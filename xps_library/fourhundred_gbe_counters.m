function plan = fourhundred_gbe_counters(blk, values, d)
% FOURHUNDRED_GBE_COUNTERS  The debug counters to draw inside the block: a struct array
%   with name (also the software register's), width, and sources: the blocks inside the
%   subsystem whose outputs are ANDed into the counter's enable -- the In port for a
%   block input, the Xilinx gateway (<model>_<block>_<port>) for a block output.
%   values: the checked parameters (fourhundred_gbe_mask's result).
if nargin < 3
  d = fourhundred_gbe_interface();
end
plan = struct('name', {}, 'width', {}, 'sources', {});
dirs = containers.Map({d.ports.name}, {d.ports.dir});
for k = 1:numel(d.parameters)
  p = d.parameters(k);
  if isempty(p.counts) || ~values.(p.name)
    continue;
  end
  sources = cell(1, numel(p.counts));
  for j = 1:numel(p.counts)
    port = p.counts{j};
    if strcmp(dirs(port), 'in')
      sources{j} = port;
    else
      sources{j} = fourhundred_gbe_gateway_name(blk, port);
    end
  end
  plan(end + 1) = struct('name', p.name, 'width', values.debug_ctr_width, ...
                         'sources', {sources}); %#ok<AGROW>
end
end
