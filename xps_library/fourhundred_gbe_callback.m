function fourhundred_gbe_callback(blk)
% FOURHUNDRED_GBE_CALLBACK  Parameter callback of the xps:fourhundred_gbe mask: enables
%   the fields that apply (the counter width only while a debug counter is on). The rule
%   is in fourhundred_gbe_enables (no Simulink calls there).
d = fourhundred_gbe_interface();
values = struct();
for k = 1:numel(d.parameters)
  values.(d.parameters(k).name) = get_param(blk, d.parameters(k).name);
end
enables = fourhundred_gbe_enables(values, d);
if ~isequal(get_param(blk, 'MaskEnables'), enables)
  set_param(blk, 'MaskEnables', enables);
end
end
