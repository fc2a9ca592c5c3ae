function v = fourhundred_gbe_check_param(name, value, spec)
% FOURHUNDRED_GBE_CHECK_PARAM  One mask parameter checked against the block's description
%   (fourhundred_gbe_interface); returns its value as a number (flags as logical).
%   Errors (id fourhundred_gbe:param) name the parameter and the value, with the same
%   text as the yellow block's design rule check.
if nargin < 3
  d = fourhundred_gbe_interface();
  idx = find(strcmp({d.parameters.name}, name));
  if isempty(idx)
    error('fourhundred_gbe:param', 'unknown parameter %s; known: %s', ...
          fourhundred_gbe_repr(name), strjoin({d.parameters.name}, ', '));
  end
  spec = d.parameters(idx);
end
r = fourhundred_gbe_repr(value);
switch spec.kind
  case 'int'
    if islogical(value)
      error('fourhundred_gbe:param', '%s %s is not an integer', name, r);
    elseif isnumeric(value)
      v = double(value);
      if ~isscalar(v) || v ~= fix(v)
        error('fourhundred_gbe:param', '%s %s is not an integer', name, r);
      end
    else
      v = fourhundred_gbe_int_text(fourhundred_gbe_text(value));
      if isempty(v)
        error('fourhundred_gbe:param', '%s %s is not an integer', name, r);
      end
    end
    if v < spec.min || v > spec.max
      error('fourhundred_gbe:param', '%s %.0f is outside %d..%d', name, v, spec.min, spec.max);
    end
  case 'flag'
    text = lower(fourhundred_gbe_text(value));
    if any(strcmp(text, {'1', 'true', 'on', 'yes'}))
      v = true;
    elseif any(strcmp(text, {'0', 'false', 'off', 'no', ''}))
      v = false;
    else
      error('fourhundred_gbe:param', '%s %s is not a flag (0/1, on/off)', name, r);
    end
  case 'mac'
    v = fourhundred_gbe_parse_mac(value, name);
    if mod(floor(v / 2^40), 2) == 1
      error('fourhundred_gbe:param', '%s %s is a multicast address', name, r);
    end
  case {'ipv4', 'host_ip', 'netmask'}
    v = fourhundred_gbe_parse_ipv4(value, name);
    if strcmp(spec.kind, 'host_ip') && ((v >= 224 * 2^24 && v < 240 * 2^24) || v == 2^32 - 1)
      error('fourhundred_gbe:param', '%s %s cannot be a host''s own address', name, r);
    end
    if strcmp(spec.kind, 'netmask')
      inv = 2^32 - 1 - v;
      if bitand(inv, inv + 1) ~= 0
        error('fourhundred_gbe:param', '%s %s is not a contiguous mask', name, r);
      end
    end
  otherwise
    error('fourhundred_gbe:param', 'parameter %s has an unknown kind %s', name, spec.kind);
end
end
