function [name, fpga, user_clk_mhz, clk_src] = fhg_design_platform(platform, platform_dir)
% FHG_DESIGN_PLATFORM  name, fpga, user_clk_mhz and clk_src (the XSG block's clock source,
%   user_clk when the YAML names none) of platforms/<platform>.yaml, looked
%   for in platform_dir, then $CASPER400G_PLATFORM_PATH, then jasper_runtime/platforms and
%   jasper_library/platforms (the toolflow's order).
here = fileparts(mfilename('fullpath'));
dirs = {};
if ~isempty(platform_dir)
  dirs{end + 1} = platform_dir;
end
env = getenv('CASPER400G_PLATFORM_PATH');
if ~isempty(env)
  dirs = [dirs, strsplit(env, pathsep)];
end
dirs{end + 1} = fullfile(here, '..', '..', 'jasper_runtime', 'platforms');
dirs{end + 1} = fullfile(here, '..', '..', 'jasper_library', 'platforms');
file = '';
for k = 1:numel(dirs)
  f = fullfile(dirs{k}, [platform '.yaml']);
  if exist(f, 'file')
    file = f;
    break;
  end
end
if isempty(file)
  error('fhg_design:platform', 'platform %s not found (looked in %s)', ...
        fourhundred_gbe_repr(platform), strjoin(dirs, ', '));
end
text = fileread(file);
name = top_key(text, 'name', file);
fpga = top_key(text, 'fpga', file);
clk = regexp(text, '^user_clk_mhz:\s*([0-9.eE+-]+)\s*(#.*)?$', 'tokens', 'once', 'lineanchors');
if isempty(clk)
  user_clk_mhz = [];
else
  user_clk_mhz = str2double(clk{1});
end
src = regexp(text, '^clk_src:\s*([A-Za-z_][A-Za-z0-9_]*)\s*(#.*)?$', 'tokens', 'once', 'lineanchors');
if isempty(src)
  clk_src = 'user_clk';
else
  clk_src = src{1};
end
end

function v = top_key(text, key, file)
tok = regexp(text, ['^' key ':[ \t]*[''"]?([^''"#\r\n]*?)[''"]?[ \t]*(#.*)?$'], 'tokens', 'once', 'lineanchors');
if isempty(tok) || isempty(strtrim(tok{1}))
  error('fhg_design:platform', '%s: no top-level %s', file, key);
end
v = strtrim(tok{1});
end
