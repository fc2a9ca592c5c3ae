function run_block(out_dir)
% RUN_BLOCK  Builds the library block against the recording shim, places it in a model
%   as mydesign/gbe0 with some parameters set, runs its mask initialisation, and dumps
%   the library block and the placed block (library.json, placed.json). Then checks that
%   a bad parameter stops the mask with a message naming it (mask_error.txt).
shim_state('reset');
build_fourhundred_gbe(out_dir);
dump_block('fourhundred_gbe/fourhundred_gbe', fullfile(out_dir, 'library.json'));
new_system('mydesign');
add_block('fourhundred_gbe/fourhundred_gbe', 'mydesign/gbe0', 'fab_ip', '''10.0.0.10''', ...
          'fab_mac', 'hex2dec(''02000a00000a'')', 'fab_en', 'on');
values = fourhundred_gbe_mask('mydesign/gbe0');
dump_block('mydesign/gbe0', fullfile(out_dir, 'placed.json'));
fid = fopen(fullfile(out_dir, 'values.txt'), 'w');
names = fieldnames(values);
for k = 1:numel(names)
  fprintf(fid, '%s\t%.0f\n', names{k}, double(values.(names{k})));
end
fclose(fid);
% Renaming the placed block renames its gateways on the next initialisation.
set_param('mydesign/gbe0', 'Name', 'gbe1');
fourhundred_gbe_mask('mydesign/gbe1');
dump_block('mydesign/gbe1', fullfile(out_dir, 'renamed.json'));
% Debug counters: drawn when selected, redrawn on a change, removed when deselected;
% the callback enables the counter width only while a counter is on.
fourhundred_gbe_callback('mydesign/gbe1');
enables_off = get_param('mydesign/gbe1', 'MaskEnables');
set_param('mydesign/gbe1', 'txctr', 'on', 'rxbadctr', 'on', 'debug_ctr_width', '20');
fourhundred_gbe_mask('mydesign/gbe1');
set_param('mydesign/gbe1', 'debug_ctr_width', '24');
fourhundred_gbe_mask('mydesign/gbe1');
fourhundred_gbe_callback('mydesign/gbe1');
enables_on = get_param('mydesign/gbe1', 'MaskEnables');
dump_block('mydesign/gbe1', fullfile(out_dir, 'counters.json'));
set_param('mydesign/gbe1', 'txctr', 'off', 'rxbadctr', 'off');
fourhundred_gbe_mask('mydesign/gbe1');
dump_block('mydesign/gbe1', fullfile(out_dir, 'counters_off.json'));
fid = fopen(fullfile(out_dir, 'enables.txt'), 'w');
fprintf(fid, '%s\n', strjoin(enables_off, ','), strjoin(enables_on, ','));
fclose(fid);
set_param('mydesign/gbe1', 'fab_udp', '70000');
msg = '';
try
  fourhundred_gbe_mask('mydesign/gbe1');
catch err
  msg = err.message;
end
fid = fopen(fullfile(out_dir, 'mask_error.txt'), 'w');
fprintf(fid, '%s', msg);
fclose(fid);
end
