function dump_block(blk, out_file)
% DUMP_BLOCK  Writes what the shim recorded for the masked block blk as JSON: its
%   parameters, every block inside (type, name, port number, gateway settings) and the
%   lines, for tests/toolflow/test_simulink.py to compare with the yellow block's description.
s = shim_state();
top = s.blocks(blk);
out = struct();
out.block = top;
inner = setdiff(find_system(blk, 'SearchDepth', 1), {blk});
items = cell(numel(inner), 1);
for k = 1:numel(inner)
  items{k} = s.blocks(inner{k});
end
out.inside = items;
ls = {};
for k = 1:numel(s.lines)
  if strcmp(s.lines{k}{1}, blk)
    ls{end + 1} = s.lines{k}(2:3); %#ok<AGROW>
  end
end
out.lines = ls;
out.saved = s.saved;
fid = fopen(out_file, 'w');
fprintf(fid, '%s', jsonencode(out));
fclose(fid);
end
