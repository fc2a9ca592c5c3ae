function d = fhg_design(name, platform, varargin)
% FHG_DESIGN  Starts a casper400g design in Octave (or MATLAB) without Simulink.
%   d = fhg_design('pktgen_400g', 'generic400g', 'clock_mhz', 390.625)
%   d = fhg_design(..., 'base_dir', dir)      user HDL sources are relative to dir (default pwd)
%   d = fhg_design(..., 'platform_dir', dir)  where <platform>.yaml is looked for first
%   Then fhg_design_add_block, fhg_design_user_module and fhg_design_write, which writes
%   the jasper.per MATLAB's frontend writes (the same as `casper400g build design.yaml`
%   writes for the equivalent design YAML); `casper400g build <dir>/jasper.per` builds it.
if ~ischar(name) || isempty(regexp(name, '^[A-Za-z_][A-Za-z0-9_]*$', 'once'))
  error('fhg_design:name', 'design name %s is not a valid identifier', fourhundred_gbe_repr(name));
end
opts = struct('clock_mhz', [], 'base_dir', pwd, 'platform_dir', '');
opts = fhg_design_options(opts, varargin, 'fhg_design');
d = struct();
d.name = name;
d.platform = platform;
d.clock_mhz = opts.clock_mhz;
d.base_dir = opts.base_dir;
d.platform_dir = opts.platform_dir;
d.blocks = {};
d.user_module = [];
end
