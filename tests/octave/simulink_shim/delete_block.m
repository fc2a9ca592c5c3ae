function delete_block(path)
% Deletes a block and everything inside it; its lines stay (as in Simulink, where they
% are left unconnected), so scripts must delete them first.
shim_log('delete_block', path);
s = shim_state();
if ~isKey(s.blocks, path)
  error('shim:delete_block', 'Invalid Simulink object name: ''%s''', path);
end
ks = keys(s.blocks);
for j = 1:numel(ks)
  if strcmp(ks{j}, path) || strncmp(ks{j}, [path '/'], numel(path) + 1)
    remove(s.blocks, ks{j});
  end
end
shim_state(s);
end
