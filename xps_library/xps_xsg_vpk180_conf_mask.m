function s = xps_xsg_vpk180_conf_mask(blk)
% XPS_XSG_VPK180_CONF_MASK  Mask initialisation of the VPK180 platform block (the XSG core
%   config of a design for the AMD VPK180): checks its parameters and sets the System
%   Generator token beside it (the block tagged genX on the same level) to the VP1802's
%   family, part, package and speed, and to the design clock's period. In the library
%   itself (no token) it only checks.
s = vpk180_platform_settings(blk, get_param(blk, 'hw_sys'), get_param(blk, 'clk_src'), ...
                             get_param(blk, 'clk_rate'));
d = vpk180_platform();
parent = get_param(blk, 'Parent');
if strcmp(parent, strtok(d.hw_sys, ':'))
  return;  % the library block
end
tokens = find_system(parent, 'SearchDepth', 1, 'FollowLinks', 'on', ...
                     'LookUnderMasks', 'all', 'Tag', 'genX');
if numel(tokens) ~= 1
  error('vpk180:platform', '%s: the platform block must sit beside exactly one System Generator token (found %d)', ...
        blk, numel(tokens));
end
xlsetparam(tokens{1}, 'xilinxfamily', d.family, 'part', d.part, 'speed', d.speed, ...
           'package', d.package, 'testbench', 'off');
xlsetparam(tokens{1}, 'sysclk_period', sprintf('%g', 1000 / s.clk_rate), ...
           'synthesis_language', 'VHDL');
end
