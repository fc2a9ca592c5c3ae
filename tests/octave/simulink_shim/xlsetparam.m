function xlsetparam(blk, varargin)
% System Generator's xlsetparam on the shim: the settings become the block's parameters.
set_param(blk, varargin{:});
end
