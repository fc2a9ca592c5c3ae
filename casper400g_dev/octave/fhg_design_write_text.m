function fhg_design_write_text(file, text)
% FHG_DESIGN_WRITE_TEXT  Writes text to file, failing with the file's name.
[fid, msg] = fopen(file, 'w');
if fid < 0
  error('fhg_design:write', 'cannot write %s: %s', file, msg);
end
fprintf(fid, '%s', text);
fclose(fid);
end
