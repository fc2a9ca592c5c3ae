function add_line(sys, from, to, varargin)
% Lines are {system, 'src/port', 'dst/port', id}; options (autorouting) are accepted.
shim_log('add_line', sys, from, to, varargin{:});
s = shim_state();
for e = {from, to}
  blk = [sys '/' e{1}(1:find(e{1} == '/', 1, 'last') - 1)];
  if ~isKey(s.blocks, blk)
    error('shim:add_line', 'Invalid Simulink object name: ''%s''', blk);
  end
end
for k = 1:numel(s.lines)
  if strcmp(s.lines{k}{1}, sys) && strcmp(s.lines{k}{3}, to)
    error('shim:add_line', 'The destination port %s already has a line', to);
  end
end
s.next_line = s.next_line + 1;
s.lines{end + 1} = {sys, from, to, s.next_line};
shim_state(s);
end
