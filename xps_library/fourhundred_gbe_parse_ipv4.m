function ip = fourhundred_gbe_parse_ipv4(value, what)
% FOURHUNDRED_GBE_PARSE_IPV4  An IPv4 address ('10.0.0.1' or a number) as a number.
%   Dotted quads take four decimal octets 0..255 without leading zeros.
if nargin < 2
  what = 'IP';
end
bad = sprintf('%s %s is not an IPv4 address', what, fourhundred_gbe_repr(value));
if islogical(value)
  error('fourhundred_gbe:param', '%s', bad);
end
if isnumeric(value)
  if ~isscalar(value) || value ~= fix(value) || value < 0 || value >= 2^32
    error('fourhundred_gbe:param', '%s', bad);
  end
  ip = double(value);
  return;
end
text = fourhundred_gbe_text(value);
tok = regexp(text, '^(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})$', 'tokens', 'once');
if isempty(tok)
  error('fourhundred_gbe:param', '%s', bad);
end
octets = str2double(tok);
if any(octets > 255)
  error('fourhundred_gbe:param', '%s', bad);
end
ip = ((octets(1) * 256 + octets(2)) * 256 + octets(3)) * 256 + octets(4);
end
