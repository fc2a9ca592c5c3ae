function delete_line(h)
% Deletes the line with handle h (from get_param(blk, 'LineHandles')).
shim_log('delete_line', h);
s = shim_state();
for k = 1:numel(s.lines)
  if s.lines{k}{4} == h
    s.lines(k) = [];
    shim_state(s);
    return;
  end
end
error('shim:delete_line', 'no line with handle %d', h);
end
