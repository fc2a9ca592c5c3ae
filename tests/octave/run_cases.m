function run_cases(cases_file, out_file)
% RUN_CASES  Runs every case of tests/data/fourhundred_gbe_cases.json through the mask's
%   pure functions and writes one line per case to out_file:
%   <table> TAB <index> TAB ok|err TAB <value or message>. tests/toolflow/test_simulink.py compares
%   the lines with the expected results and with the yellow block's own.
doc = jsondecode(fileread(cases_file));
fid = fopen(out_file, 'w');
cases = as_cell(doc.params);
for k = 1:numel(cases)
  c = cases{k};
  try
    v = fourhundred_gbe_check_param(c.param, c.value);
    fprintf(fid, 'params\t%d\tok\t%s\n', k - 1, show(v));
  catch err
    fprintf(fid, 'params\t%d\terr\t%s\n', k - 1, err.message);
  end
end
cases = as_cell(doc.names);
for k = 1:numel(cases)
  c = cases{k};
  try
    fprintf(fid, 'names\t%d\tok\t%s\n', k - 1, fourhundred_gbe_gateway_name(c.path, c.port));
  catch err
    fprintf(fid, 'names\t%d\terr\t%s\n', k - 1, err.message);
  end
end
d = fourhundred_gbe_interface();
cases = as_cell(doc.gateway_ports);
for k = 1:numel(cases)
  c = cases{k};
  p = fourhundred_gbe_port_of_gateway(c.gateway, {d.ports.name});
  fprintf(fid, 'gateway_ports\t%d\tok\t%s\n', k - 1, p);
end
fclose(fid);
end

function c = as_cell(x)
if iscell(x)
  c = x;
else
  c = num2cell(x);
end
end

function s = show(v)
if islogical(v)
  if v
    s = 'true';
  else
    s = 'false';
  end
else
  s = sprintf('%.0f', v);
end
end
