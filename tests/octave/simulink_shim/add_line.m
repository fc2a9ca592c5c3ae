function add_line(sys, from, to)
shim_log('add_line', sys, from, to);
s = shim_state();
for e = {from, to}
  blk = [sys '/' e{1}(1:find(e{1} == '/', 1, 'last') - 1)];
  if ~isKey(s.blocks, blk)
    error('shim:add_line', 'Invalid Simulink object name: ''%s''', blk);
  end
end
s.lines{end + 1} = {sys, from, to};
shim_state(s);
end
