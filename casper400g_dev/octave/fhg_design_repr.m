function r = fhg_design_repr(value)
% FHG_DESIGN_REPR  A value as messages show it.
if ischar(value)
  r = ['''' value ''''];
elseif isnumeric(value) && isscalar(value)
  r = sprintf('%.15g', double(value));
else
  r = sprintf('<%s>', class(value));
end
end
