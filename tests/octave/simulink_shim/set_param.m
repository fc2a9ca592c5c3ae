function set_param(path, varargin)
shim_log('set_param', path, varargin{:});
s = shim_state();
if ~isKey(s.blocks, path)
  error('shim:set_param', 'Invalid Simulink object name: ''%s''', path);
end
for k = 1:2:numel(varargin)
  name = varargin{k};
  value = varargin{k + 1};
  b = s.blocks(path);
  if strcmp(name, 'Name')
    old_name = b.Name;
    new_path = [b.Parent '/' value];
    if isKey(s.blocks, new_path)
      error('shim:set_param', 'A block named ''%s'' already exists', new_path);
    end
    b.Name = value;
    remove(s.blocks, path);
    s.blocks(new_path) = b;
    % Children move with their parent.
    ks = keys(s.blocks);
    for j = 1:numel(ks)
      c = s.blocks(ks{j});
      if strncmp(c.Parent, [path '/'], numel(path) + 1) || strcmp(c.Parent, path)
        c.Parent = [new_path c.Parent(numel(path) + 1:end)];
        remove(s.blocks, ks{j});
        s.blocks([c.Parent '/' c.Name]) = c;
      end
    end
    % Lines refer to blocks by name within their system.
    pat = ['^' regexptranslate('escape', old_name) '/'];
    for j = 1:numel(s.lines)
      ln = s.lines{j};
      if strcmp(ln{1}, b.Parent)
        ln{2} = regexprep(ln{2}, pat, [value '/']);
        ln{3} = regexprep(ln{3}, pat, [value '/']);
      elseif strcmp(ln{1}, path) || strncmp(ln{1}, [path '/'], numel(path) + 1)
        ln{1} = [new_path ln{1}(numel(path) + 1:end)];
      end
      s.lines{j} = ln;
    end
    path = new_path;
  else
    b.(name) = value;
    s.blocks(path) = b;
  end
end
shim_state(s);
end
