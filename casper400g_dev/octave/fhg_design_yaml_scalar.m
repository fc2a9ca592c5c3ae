function text = fhg_design_yaml_scalar(value)
% FHG_DESIGN_YAML_SCALAR  A scalar as YAML: text single-quoted (read back as text
%   whatever it holds), whole numbers as integers, others in full precision, logical
%   values as 1/0 (as the design YAML's flags).
if ischar(value)
  text = ['''' strrep(value, '''', '''''') ''''];
elseif islogical(value) && isscalar(value)
  text = sprintf('%d', double(value));
elseif isnumeric(value) && isscalar(value) && isreal(value) && isfinite(value)
  if value == fix(value) && abs(value) < 2^53
    text = sprintf('%.0f', double(value));
  else
    text = sprintf('%.17g', double(value));
    if isempty(regexp(text, '[.eE]', 'once'))
      text = [text '.0'];
    end
  end
else
  error('fhg_design:yaml', 'cannot write a %s value to jasper.per (text or a number)', class(value));
end
end
