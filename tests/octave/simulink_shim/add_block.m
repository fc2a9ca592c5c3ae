function add_block(src, dst, varargin)
shim_log('add_block', src, dst, varargin{:});
s = shim_state();
if isKey(s.blocks, src)
  copy_block(s, src, dst, varargin);
  return;
end
[block_type, mask_type] = shim_library(src);
parent = dst(1:find(dst == '/', 1, 'last') - 1);
if isempty(parent) || ~(any(strcmp(s.systems, parent)) || isKey(s.blocks, parent))
  error('shim:add_block', 'Invalid destination ''%s'': no parent system', dst);
end
if isKey(s.blocks, dst)
  error('shim:add_block', 'A block named ''%s'' already exists', dst);
end
b = struct('SourceBlock', src, 'BlockType', block_type, 'MaskType', mask_type, ...
           'Name', dst(find(dst == '/', 1, 'last') + 1:end), 'Parent', parent);
if mod(numel(varargin), 2) ~= 0
  error('shim:add_block', 'parameters must come in name/value pairs');
end
store_block(s, dst, b, varargin);
end

function copy_block(s, src, dst, params)
% Placing a library block in a model copies it with everything inside.
parent = dst(1:find(dst == '/', 1, 'last') - 1);
if ~(any(strcmp(s.systems, parent)) || isKey(s.blocks, parent))
  error('shim:add_block', 'Invalid destination ''%s'': no parent system', dst);
end
ks = keys(s.blocks);
for j = 1:numel(ks)
  k = ks{j};
  if strcmp(k, src) || strncmp(k, [src '/'], numel(src) + 1)
    b = s.blocks(k);
    newp = [dst k(numel(src) + 1:end)];
    b.Parent = newp(1:find(newp == '/', 1, 'last') - 1);
    b.Name = newp(find(newp == '/', 1, 'last') + 1:end);
    s.blocks(newp) = b;
  end
end
for j = 1:numel(s.lines)
  ln = s.lines{j};
  if strcmp(ln{1}, src) || strncmp(ln{1}, [src '/'], numel(src) + 1)
    s.next_line = s.next_line + 1;
    s.lines{end + 1} = {[dst ln{1}(numel(src) + 1:end)], ln{2}, ln{3}, s.next_line};
  end
end
store_block(s, dst, s.blocks(dst), params);
end

function store_block(s, dst, b, params)
% Block b at dst with the name/value pairs of params set, kept in the shim's state.
for k = 1:2:numel(params)
  b.(params{k}) = params{k + 1};
end
s.blocks(dst) = b;
shim_state(s);
end
