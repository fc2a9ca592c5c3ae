function save_system(sys, file)
shim_log('save_system', sys, file);
s = shim_state();
s.saved{end + 1} = {sys, file};
shim_state(s);
end
