function text = fhg_design_wrapper(model, u, conns, sig, gdir, gwidth)
% FHG_DESIGN_WRAPPER  The user logic seen from the toolflow: a module named after the
%   model whose ports are every block's gateways (as a System Generator netlist's),
%   instantiating the user's module; unmapped block inputs tied to 0. The same text as
%   the design YAML frontend writes.
nl = sprintf('\n');
L = {sprintf('// %s: the design''s user logic seen from the toolflow, written by casper400g from', model), ...
     '// the design file -- regenerate, do not edit. Its ports are every block''s gateways', ...
     '// (as a System Generator netlist''s); unmapped block inputs are tied to 0.', ...
     '`default_nettype none', sprintf('module %s (', model)};
decl = {'    input  wire clk'};
for k = 1:numel(sig)
  if strcmp(gdir{k}, 'in')
    kind = 'output';
  else
    kind = 'input ';
  end
  rng = '';
  if gwidth(k) > 1
    rng = sprintf('[%d:0] ', gwidth(k) - 1);
  end
  decl{end + 1} = sprintf('    %s wire %s%s', kind, rng, sig{k}); %#ok<AGROW>
end
L{end + 1} = strjoin(decl, [',' nl]);
L{end + 1} = ');';
mapped = conns(:, 2)';
unused = {};
for k = 1:numel(sig)
  if strcmp(gdir{k}, 'out') && ~any(strcmp(mapped, sig{k}))
    unused{end + 1} = sig{k}; %#ok<AGROW>
  end
end
for k = 1:numel(sig)
  if strcmp(gdir{k}, 'in') && ~any(strcmp(mapped, sig{k}))
    L{end + 1} = sprintf('    assign %s = %d''d0;', sig{k}, gwidth(k)); %#ok<AGROW>
  end
end
if ~isempty(unused)
  L{end + 1} = '    wire unused_gateways;';
  L{end + 1} = sprintf('    assign unused_gateways = ^{%s};', strjoin(unused, ', '));
end
head = ['    ' u.module];
p = u.parameters;
if ~isempty(p)
  items = cell(1, numel(p) / 2);
  for k = 1:2:numel(p)
    v = p{k + 1};
    if isnumeric(v)
      v = sprintf('%.15g', v);
    end
    items{(k + 1) / 2} = sprintf('        .%s(%s)', p{k}, v);
  end
  head = [head ' #(' nl strjoin(items, [',' nl]) nl '    )'];
end
L{end + 1} = [head ' u_user ('];
pl = {sprintf('        .%s(clk)', u.clock)};
for k = 1:size(conns, 1)
  pl{end + 1} = sprintf('        .%s(%s)', conns{k, 1}, conns{k, 2}); %#ok<AGROW>
end
L{end + 1} = strjoin(pl, [',' nl]);
L{end + 1} = '    );';
L{end + 1} = 'endmodule';
L{end + 1} = '`default_nettype wire';
text = [strjoin(L, nl) nl];
end
