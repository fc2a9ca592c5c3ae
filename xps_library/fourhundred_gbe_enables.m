function enables = fourhundred_gbe_enables(values, d)
% FOURHUNDRED_GBE_ENABLES  'on'/'off' for each mask parameter (in the description's
%   order): a parameter with enabled_by is enabled while any of those flags is on.
%   values: struct of the parameters' values (numbers/logicals or mask text).
if nargin < 2
  d = fourhundred_gbe_interface();
end
enables = repmat({'on'}, 1, numel(d.parameters));
for k = 1:numel(d.parameters)
  deps = d.parameters(k).enabled_by;
  if isempty(deps)
    continue;
  end
  on = false;
  for j = 1:numel(deps)
    on = on || (isfield(values, deps{j}) && flag_on(values.(deps{j})));
  end
  if ~on
    enables{k} = 'off';
  end
end
end

function tf = flag_on(v)
if ischar(v)
  tf = any(strcmpi(strtrim(v), {'on', '1', 'true', 'yes'}));
else
  tf = logical(v);
end
end
