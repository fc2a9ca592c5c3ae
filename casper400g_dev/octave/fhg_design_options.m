function opts = fhg_design_options(opts, args, where)
% FHG_DESIGN_OPTIONS  Name/value pairs into the option struct opts (unknown names refused).
if mod(numel(args), 2) ~= 0
  error('fhg_design:options', '%s: options come in name/value pairs', where);
end
for k = 1:2:numel(args)
  key = args{k};
  if ~ischar(key) || ~isfield(opts, key)
    error('fhg_design:options', '%s: unknown option %s; known: %s', where, ...
          fourhundred_gbe_repr(key), strjoin(fieldnames(opts)', ', '));
  end
  opts.(key) = args{k + 1};
end
end
