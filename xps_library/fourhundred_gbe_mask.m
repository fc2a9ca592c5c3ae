function values = fourhundred_gbe_mask(blk)
% FOURHUNDRED_GBE_MASK  Mask initialisation of the xps:fourhundred_gbe block:
%   fourhundred_gbe_mask(gcb) checks every mask parameter (the same rules as the yellow
%   block's design rule check, from the same description) and renames the block's Xilinx
%   gateways to <model>_<block>_<port>, the names the toolflow wires the core to.
%   With debug counters selected it draws, for each, an AND of the signals it counts,
%   a Xilinx Counter (reset by the block's debug_rst input) and a To Processor software
%   register named after the counter; the drawing is removed and redrawn each time.
%   Returns the parameters as numbers (flags as logical).
%   The checks and names are plain functions (fourhundred_gbe_check_param,
%   fourhundred_gbe_gateway_name, fourhundred_gbe_port_of_gateway); only this file and
%   fourhundred_gbe_callback call Simulink.
d = fourhundred_gbe_interface();
values = struct();
for k = 1:numel(d.parameters)
  spec = d.parameters(k);
  text = get_param(blk, spec.name);
  try
    values.(spec.name) = fourhundred_gbe_check_param(spec.name, text, spec);
  catch err
    error('fourhundred_gbe:mask', '%s: %s (%s)', blk, err.message, spec.prompt);
  end
end
ports = {d.ports.name};
gws = [find_system(blk, 'SearchDepth', 1, 'LookUnderMasks', 'all', 'FollowLinks', 'on', ...
                   'MaskType', 'Xilinx Gateway In Block'); ...
       find_system(blk, 'SearchDepth', 1, 'LookUnderMasks', 'all', 'FollowLinks', 'on', ...
                   'MaskType', 'Xilinx Gateway Out Block')];
seen = {};
for k = 1:numel(gws)
  name = get_param(gws{k}, 'Name');
  port = fourhundred_gbe_port_of_gateway(name, ports);
  if isempty(port)
    error('fourhundred_gbe:mask', ['%s: gateway %s inside the block belongs to no port ' ...
          'of the core; rebuild the block (build_fourhundred_gbe)'], blk, name);
  end
  if any(strcmp(seen, port))
    error('fourhundred_gbe:mask', '%s: two gateways for port %s', blk, port);
  end
  seen{end + 1} = port; %#ok<AGROW>
  want = fourhundred_gbe_gateway_name(blk, port);
  if ~strcmp(name, want)
    set_param(gws{k}, 'Name', want);
  end
end
missing = setdiff(ports, seen);
if ~isempty(missing)
  error('fourhundred_gbe:mask', '%s: no gateway for port(s) %s; rebuild the block', ...
        blk, strjoin(missing, ', '));
end
draw_counters(blk, fourhundred_gbe_counters(blk, values, d), d);
end

function draw_counters(blk, plan, d)
% Everything a previous run drew goes first (with its lines), so a changed selection
% or width leaves nothing stale.
for k = 1:numel(d.parameters)
  if ~isempty(d.parameters(k).counts)
    c = d.parameters(k).name;
    remove_block(blk, c);
    remove_block(blk, [c '_ctr']);
    remove_block(blk, [c '_and']);
  end
end
if isempty(plan)
  remove_block(blk, 'debug_rst');
  return;
end
if ~any(strcmp(find_system(blk, 'SearchDepth', 1, 'Name', 'debug_rst'), [blk '/debug_rst']))
  n_in = sum(strcmp({d.ports.dir}, 'in'));
  add_block('simulink/Sources/In1', [blk '/debug_rst'], 'Port', sprintf('%d', n_in + 1), ...
            'Position', [20 30 * (numel(d.ports) + 2) 50 30 * (numel(d.ports) + 2) + 14]);
end
width = sprintf('%d', plan(1).width);
for k = 1:numel(plan)
  c = plan(k);
  y = 30 * (numel(d.ports) + 2 + 2 * k);
  enable = c.sources{1};
  if numel(c.sources) > 1
    enable = [c.name '_and'];
    add_block('xbsIndex_r4/Logical', [blk '/' enable], 'logical_function', 'AND', ...
              'inputs', sprintf('%d', numel(c.sources)), 'latency', '0', ...
              'Position', [400 y 440 y + 40]);
    for j = 1:numel(c.sources)
      add_line(blk, [c.sources{j} '/1'], sprintf('%s/%d', enable, j), 'autorouting', 'on');
    end
  end
  add_block('xbsIndex_r4/Counter', [blk '/' c.name '_ctr'], 'cnt_type', 'Free Running', ...
            'arith_type', 'Unsigned', 'n_bits', width, 'bin_pt', '0', 'rst', 'on', ...
            'en', 'on', 'explicit_period', 'on', 'period', '1', ...
            'Position', [480 y 530 y + 40]);
  add_block('xps_library/software_register', [blk '/' c.name], 'io_dir', 'To Processor', ...
            'arith_types', '0', 'bitwidths', width, 'sim_port', 'off', ...
            'Position', [570 y 670 y + 20]);
  add_line(blk, 'debug_rst/1', [c.name '_ctr/1'], 'autorouting', 'on');
  add_line(blk, [enable '/1'], [c.name '_ctr/2'], 'autorouting', 'on');
  add_line(blk, [c.name '_ctr/1'], [c.name '/1'], 'autorouting', 'on');
end
end

function remove_block(blk, name)
path = [blk '/' name];
% SearchDepth 1 lists blk itself too: compare whole paths.
if ~any(strcmp(find_system(blk, 'SearchDepth', 1, 'Name', name), path))
  return;
end
h = get_param(path, 'LineHandles');
lines = [h.Inport(:); h.Outport(:)];
lines = lines(lines > 0);
for k = 1:numel(lines)
  delete_line(lines(k));
end
delete_block(path);
end

