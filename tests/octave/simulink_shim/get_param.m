function value = get_param(path, name)
s = shim_state();
if ~isKey(s.blocks, path)
  error('shim:get_param', 'Invalid Simulink object name: ''%s''', path);
end
b = s.blocks(path);
if ~isfield(b, name)
  % A mask parameter that was never set takes its dialog default from MaskValueString.
  value = mask_default(b, name);
  return;
end
value = b.(name);
end

function value = mask_default(b, name)
if ~isfield(b, 'MaskVariables')
  error('shim:get_param', 'block does not have a parameter named ''%s''', name);
end
vars = strsplit(b.MaskVariables(1:end - 1), ';');
vals = strsplit(b.MaskValueString, '|');
for k = 1:numel(vars)
  if strcmp(vars{k}(1:find(vars{k} == '=') - 1), name)
    value = vals{k};
    return;
  end
end
error('shim:get_param', 'block does not have a parameter named ''%s''', name);
end
