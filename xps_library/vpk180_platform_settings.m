function s = vpk180_platform_settings(blk, hw_sys, clk_src, clk_rate)
% VPK180_PLATFORM_SETTINGS  The VPK180 platform block's parameters checked (no Simulink
%   calls): hw_sys and clk_src must be the platform's, clk_rate (MHz, text or number) must
%   lie in its range. Returns them as a struct; errors name the block and the value.
d = vpk180_platform();
if ~strcmp(hw_sys, d.hw_sys)
  error('vpk180:platform', '%s: hw_sys ''%s'' is not this platform''s (%s)', blk, hw_sys, d.hw_sys);
end
if ~strcmp(clk_src, d.clk_src)
  error('vpk180:platform', '%s: clk_src ''%s'' is not a clock of %s (it has: %s)', ...
        blk, clk_src, d.name, d.clk_src);
end
if ischar(clk_rate)
  text = strtrim(clk_rate);
  rate = str2double(text);
else
  text = num2str(clk_rate);
  rate = double(clk_rate);
end
if ~isscalar(rate) || isnan(rate)
  error('vpk180:platform', '%s: clk_rate ''%s'' is not a number (MHz)', blk, text);
end
if rate < d.clk_rate_min || rate > d.clk_rate_max
  error('vpk180:platform', '%s: clk_rate %g MHz is outside %g..%g (400 Gb/s at 1024 bits per cycle needs at least %g)', ...
        blk, rate, d.clk_rate_min, d.clk_rate_max, d.clk_rate_min);
end
s = struct('hw_sys', hw_sys, 'clk_src', clk_src, 'clk_rate', rate);
end
