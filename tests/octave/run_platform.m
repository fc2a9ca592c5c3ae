function run_platform(out_dir)
% RUN_PLATFORM  Builds the VPK180 platform block against the recording shim and dumps it
%   (platform.json); places it beside a System Generator token in a model, runs its mask
%   initialisation and dumps the token (token.json) and the placed block's parameters
%   (placed.json); then records the errors for a bad clock rate and a missing token
%   (errors.txt, one per line).
shim_state('reset');
build_vpk180(out_dir);
dump_block('VPK180/VPK180', fullfile(out_dir, 'platform.json'));
new_system('mydesign');
add_block('built-in/Subsystem', 'mydesign/System Generator', 'Tag', 'genX');
add_block('VPK180/VPK180', 'mydesign/XSG core config');
xps_xsg_vpk180_conf_mask('mydesign/XSG core config');
dump_block('mydesign/System Generator', fullfile(out_dir, 'token.json'));
dump_block('mydesign/XSG core config', fullfile(out_dir, 'placed.json'));
fid = fopen(fullfile(out_dir, 'errors.txt'), 'w');
set_param('mydesign/XSG core config', 'clk_rate', '100');
fprintf(fid, '%s\n', caught(@() xps_xsg_vpk180_conf_mask('mydesign/XSG core config')));
set_param('mydesign/XSG core config', 'clk_rate', 'fast');
fprintf(fid, '%s\n', caught(@() xps_xsg_vpk180_conf_mask('mydesign/XSG core config')));
new_system('other');
add_block('VPK180/VPK180', 'other/XSG core config');
fprintf(fid, '%s\n', caught(@() xps_xsg_vpk180_conf_mask('other/XSG core config')));
fclose(fid);
end

function msg = caught(f)
msg = 'no error';
try
  f();
catch err
  msg = err.message;
end
end
