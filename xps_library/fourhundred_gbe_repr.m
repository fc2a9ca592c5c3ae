function r = fourhundred_gbe_repr(value)
% FOURHUNDRED_GBE_REPR  A value as error messages show it: text quoted, numbers plain
%   (the same form as the yellow block's messages).
if ischar(value)
  if any(value == '''') && ~any(value == '"')
    r = ['"' value '"'];
  else
    r = ['''' strrep(value, '''', '\''') ''''];
  end
elseif islogical(value)
  if value
    r = 'True';
  else
    r = 'False';
  end
elseif isnumeric(value) && isscalar(value) && value == fix(value)
  r = sprintf('%.0f', double(value));
elseif isnumeric(value) && isscalar(value)
  r = sprintf('%.15g', double(value));
else
  r = sprintf('<%s>', class(value));
end
end
