function found = find_system(sys, varargin)
% Supports 'SearchDepth' and parameter filters; LookUnderMasks/FollowLinks are accepted
% (the shim has no links and looks under every mask).
s = shim_state();
depth = inf;
filters = {};
for k = 1:2:numel(varargin)
  switch varargin{k}
    case 'SearchDepth'
      depth = varargin{k + 1};
    case {'LookUnderMasks', 'FollowLinks'}
    otherwise
      filters(end + 1, :) = varargin(k:k + 1); %#ok<AGROW>
  end
end
found = {};
ks = sort(keys(s.blocks));
for j = 1:numel(ks)
  p = ks{j};
  % The system itself is listed too when it is a block (as Simulink does).
  if ~strcmp(p, sys)
    if ~strncmp(p, [sys '/'], numel(sys) + 1)
      continue;
    end
    if sum(p(numel(sys) + 2:end) == '/') + 1 > depth
      continue;
    end
  end
  b = s.blocks(p);
  ok = true;
  for f = 1:size(filters, 1)
    ok = ok && isfield(b, filters{f, 1}) && isequal(b.(filters{f, 1}), filters{f, 2});
  end
  if ok
    found{end + 1, 1} = p; %#ok<AGROW>
  end
end
end
