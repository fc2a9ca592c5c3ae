function text = fourhundred_gbe_text(value)
% FOURHUNDRED_GBE_TEXT  A mask value as text: blanks and one pair of quotes removed.
%   A literal mask field holds what the designer typed, so '10.0.0.1' may arrive with
%   its MATLAB quotes. Numbers are written in full (no exponent).
if exist('isstring', 'builtin') && isstring(value)  % MATLAB's string class
  value = char(value);
end
if ischar(value)
  text = strtrim(value);
elseif islogical(value)
  text = sprintf('%d', double(value));
elseif isnumeric(value) && isscalar(value)
  if value == fix(value)
    text = sprintf('%.0f', double(value));
  else
    text = sprintf('%.15g', double(value));
  end
else
  error('fourhundred_gbe:value', 'expected text or a number, got a %s', class(value));
end
if numel(text) >= 2 && text(1) == '''' && text(end) == ''''
  text = strtrim(text(2:end-1));
end
end
