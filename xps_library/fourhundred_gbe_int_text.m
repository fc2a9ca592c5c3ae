function v = fourhundred_gbe_int_text(text)
% FOURHUNDRED_GBE_INT_TEXT  Decimal ('-12', '7148') or hex ('0x1c') integer text as a
%   number; [] when the text is neither. The yellow block accepts the same forms.
v = [];
if ~isempty(regexp(text, '^-?[0-9]+$', 'once'))
  v = str2double(text);
elseif ~isempty(regexp(text, '^0[xX][0-9A-Fa-f]+$', 'once'))
  v = hex2dec(text(3:end));
end
end
