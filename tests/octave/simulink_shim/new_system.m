function new_system(name, varargin)
shim_log('new_system', name, varargin{:});
s = shim_state();
if any(strcmp(s.systems, name))
  error('shim:new_system', 'A system named ''%s'' already exists', name);
end
s.systems{end + 1} = name;
shim_state(s);
end
