function gws = fhg_design_gateways(t, params, where)
% FHG_DESIGN_GATEWAYS  A block's gateways {suffix, dir, width; ...} for its parameters.
if isempty(t.selector)
  gws = t.gateways{1, 2};
  return;
end
value = params{strcmp(params(:, 1), t.selector), 2};
row = find(strcmp(t.gateways(:, 1), value));
if ~ischar(value) || isempty(row)
  error('fhg_design:block', '%s: %s %s is not one of %s', where, t.selector, ...
        fourhundred_gbe_repr(value), strjoin(t.gateways(:, 1)', ', '));
end
gws = t.gateways{row, 2};
end
