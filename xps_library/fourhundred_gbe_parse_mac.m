function mac = fourhundred_gbe_parse_mac(value, what)
% FOURHUNDRED_GBE_PARSE_MAC  A MAC address as a number (exact below 2^53).
%   Accepts 'aa:bb:cc:dd:ee:ff', 'aa-bb-cc-dd-ee-ff', '0x02000a00000a', decimal text,
%   hex2dec('02000a00000a') (as typed into a literal mask field) or a number.
if nargin < 2
  what = 'MAC';
end
bad = sprintf('%s %s is not a MAC address', what, fourhundred_gbe_repr(value));
if islogical(value)
  error('fourhundred_gbe:param', '%s', bad);
end
if isnumeric(value)
  if ~isscalar(value) || value ~= fix(value)
    error('fourhundred_gbe:param', '%s', bad);
  end
  mac = double(value);
else
  text = fourhundred_gbe_text(value);
  tok = regexp(text, '^hex2dec\(\s*''([0-9A-Fa-f]+)''\s*\)$', 'tokens', 'once');
  if ~isempty(tok)
    mac = hex2dec(tok{1});
  elseif ~isempty(regexp(text, '^[0-9A-Fa-f]{2}([:-][0-9A-Fa-f]{2}){5}$', 'once'))
    mac = hex2dec(text(~(text == ':' | text == '-')));
  else
    mac = fourhundred_gbe_int_text(text);
    if isempty(mac)
      error('fourhundred_gbe:param', '%s', bad);
    end
  end
end
if mac < 0 || mac >= 2^48
  error('fourhundred_gbe:param', '%s %s does not fit 48 bits', what, fourhundred_gbe_repr(value));
end
end
