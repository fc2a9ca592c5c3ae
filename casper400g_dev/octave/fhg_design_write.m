function per = fhg_design_write(d, build_dir)
% FHG_DESIGN_WRITE  Writes <build_dir>/jasper.per (and the user logic's wrapper
%   <build_dir>/user/<name>.v) for the design d; returns the jasper.per path.
%   The file has the structure MATLAB's jasper_frontend writes; `casper400g build
%   <build_dir>/jasper.per` runs the toolflow on it (block design rule checks that need
%   the platform, such as the QSFP-DD cage, run there).
build_dir = fhg_design_abspath(build_dir);
model = d.name;
[plat_name, fpga, user_clk, clk_src] = fhg_design_platform(d.platform, d.platform_dir);
if isempty(d.clock_mhz)
  clk_rate = user_clk;
else
  clk_rate = d.clock_mhz;
end
if isempty(d.blocks)
  error('fhg_design:write', 'design %s has no blocks', model);
end
% Every block's gateways: signal <model>_<block>_<port>, in block order.
sig = {};
gdir = {};
gwidth = [];
for k = 1:numel(d.blocks)
  b = d.blocks{k};
  for g = 1:size(b.gateways, 1)
    sig{end + 1} = sprintf('%s_%s_%s', model, b.name, b.gateways{g, 1}); %#ok<AGROW>
    gdir{end + 1} = b.gateways{g, 2}; %#ok<AGROW>
    gwidth(end + 1) = b.gateways{g, 3}; %#ok<AGROW>
  end
end
user = fhg_design_user(d, build_dir, sig, gdir, gwidth);
if ~exist(build_dir, 'dir')
  mkdir(build_dir);
end
lines = {'# written by fhg_design_write (casper400g''s Octave frontend) -- the same structure', ...
         '# MATLAB''s jasper_frontend writes; `casper400g build` accepts this file.', ...
         'yellow_blocks:'};
lines = [lines, fhg_design_yaml_map(2, [model '/XSG'], { ...
  'name', 'XSG'; 'fullpath', [model '/XSG']; 'tag', 'xps:xsg'; ...
  'hw_sys', [plat_name ':' fpga]; 'clk_src', clk_src; 'clk_rate', clk_rate})];
for k = 1:numel(d.blocks)
  b = d.blocks{k};
  entries = [{'name', b.name; 'fullpath', [model '/' b.name]; 'tag', ['xps:' b.type]}; b.params];
  lines = [lines, fhg_design_yaml_map(2, [model '/' b.name], entries)]; %#ok<AGROW>
end
if isempty(user)
  lines{end + 1} = 'user_modules: {}';
else
  lines{end + 1} = 'user_modules:';
  lines{end + 1} = ['  ' fhg_design_yaml_scalar(model) ':'];
  lines{end + 1} = '    clock: clk';
  lines{end + 1} = '    ports:';
  for k = 1:numel(user.ports)
    lines{end + 1} = ['    - ' fhg_design_yaml_scalar(user.ports{k})]; %#ok<AGROW>
  end
  lines{end + 1} = '    sources:';
  for k = 1:numel(user.sources)
    lines{end + 1} = ['    - ' fhg_design_yaml_scalar(user.sources{k})]; %#ok<AGROW>
  end
end
per = fullfile(build_dir, 'jasper.per');
fhg_design_write_text(per, [strjoin(lines, sprintf('\n')) sprintf('\n')]);
end

function user = fhg_design_user(d, build_dir, sig, gdir, gwidth)
model = d.name;
u = d.user_module;
if isempty(u)
  if ~isempty(sig)
    error('fhg_design:write', 'the blocks have gateways but the design has no user module');
  end
  user = [];
  return;
end
if strcmp(u.module, model)
  error('fhg_design:write', ['user module may not be named like the design (%s): that ' ...
        'name is the generated wrapper''s'], model);
end
sources = cell(1, numel(u.sources));
for k = 1:numel(u.sources)
  src = u.sources{k};
  p = src;
  if ~fhg_design_is_absolute(p)
    p = fullfile(d.base_dir, p);
  end
  if ~exist(p, 'file')
    error('fhg_design:write', 'user module: source %s not found (looked for %s)', src, p);
  end
  sources{k} = fhg_design_abspath(p);
end
conns = cell(size(u.ports, 1), 2);
for k = 1:size(u.ports, 1)
  port = u.ports{k, 1};
  target = u.ports{k, 2};
  slash = find(target == '/', 1);
  if isempty(slash)
    error('fhg_design:write', 'user module port %s: %s is not <block>/<port>', port, ...
          fourhundred_gbe_repr(target));
  end
  s = sprintf('%s_%s_%s', model, target(1:slash - 1), target(slash + 1:end));
  if ~any(strcmp(sig, s))
    blk = target(1:slash - 1);
    names = {};
    for j = 1:numel(d.blocks)
      if strcmp(d.blocks{j}.name, blk)
        names = d.blocks{j}.gateways(:, 1)';
      end
    end
    if isempty(names)
      error('fhg_design:write', 'user module port %s: no block %s', port, fourhundred_gbe_repr(blk));
    end
    error('fhg_design:write', 'user module port %s: block %s has no port %s (it has: %s)', ...
          port, blk, fourhundred_gbe_repr(target(slash + 1:end)), strjoin(sort(names), ', '));
  end
  if any(strcmp(conns(1:k - 1, 2), s))
    error('fhg_design:write', 'user module port %s: %s used twice', port, target);
  end
  conns(k, :) = {port, s};
end
wrapper = fullfile(build_dir, 'user', [model '.v']);
if ~exist(fileparts(wrapper), 'dir')
  mkdir(fileparts(wrapper));
end
fhg_design_write_text(wrapper, fhg_design_wrapper(model, u, conns, sig, gdir, gwidth));
user = struct('ports', {sig}, 'sources', {[{wrapper}, sources]});
end
