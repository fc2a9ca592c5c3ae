function p = fhg_design_abspath(p)
% FHG_DESIGN_ABSPATH  An absolute path with symbolic links resolved where it exists (as
%   the design YAML frontend records sources).
if exist('canonicalize_file_name', 'builtin') || exist('canonicalize_file_name', 'file')
  [c, status] = canonicalize_file_name(p);
  if status == 0
    p = c;
    return;
  end
  p = make_absolute_filename(p);
else
  f = java.io.File(p);
  if ~f.isAbsolute()
    f = java.io.File(pwd, p);
  end
  p = char(f.getCanonicalPath());
end
end
