function value = get_param(path, name)
s = shim_state();
if ~isKey(s.blocks, path)
  error('shim:get_param', 'Invalid Simulink object name: ''%s''', path);
end
b = s.blocks(path);
if strcmp(name, 'LineHandles')
  % Handles of the lines into (Inport) and out of (Outport) the block; -1: none.
  value = struct('Inport', -1, 'Outport', -1);
  ins = [];
  outs = [];
  for k = 1:numel(s.lines)
    ln = s.lines{k};
    if strcmp(ln{1}, b.Parent)
      if strncmp(ln{3}, [b.Name '/'], numel(b.Name) + 1)
        ins(end + 1) = ln{4}; %#ok<AGROW>
      end
      if strncmp(ln{2}, [b.Name '/'], numel(b.Name) + 1)
        outs(end + 1) = ln{4}; %#ok<AGROW>
      end
    end
  end
  if ~isempty(ins)
    value.Inport = ins;
  end
  if ~isempty(outs)
    value.Outport = outs;
  end
  return;
end
if strcmp(name, 'MaskEnables') && ~isfield(b, name) && isfield(b, 'MaskVariables')
  value = repmat({'on'}, 1, sum(b.MaskVariables == ';'));
  return;
end
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
