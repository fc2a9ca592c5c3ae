function tf = fhg_design_is_absolute(p)
% FHG_DESIGN_IS_ABSOLUTE  Whether p is an absolute path (POSIX or Windows).
tf = ~isempty(p) && (p(1) == '/' || p(1) == '\' || ...
     ~isempty(regexp(p, '^[A-Za-z]:[\\/]', 'once')));
end
