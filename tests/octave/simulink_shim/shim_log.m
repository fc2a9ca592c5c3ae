function shim_log(fn, varargin)
% SHIM_LOG  Appends one call to the shim's log.
s = shim_state();
s.log{end + 1} = [{fn}, varargin];
shim_state(s);
end
