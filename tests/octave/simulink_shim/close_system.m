function close_system(sys, varargin)
shim_log('close_system', sys, varargin{:});
end
