function lines = fhg_design_yaml_map(indent, key, entries)
% FHG_DESIGN_YAML_MAP  One YAML mapping entry key: {name: value, ...} as block lines.
pad = repmat(' ', 1, indent);
lines = {[pad fhg_design_yaml_scalar(key) ':']};
for k = 1:size(entries, 1)
  lines{end + 1} = sprintf('%s  %s: %s', pad, fhg_design_yaml_scalar(entries{k, 1}), ...
                           fhg_design_yaml_scalar(entries{k, 2})); %#ok<AGROW>
end
end
