function [block_type, mask_type] = shim_library(src)
% SHIM_LIBRARY  The library blocks the scripts may add, with the BlockType and MaskType
%   Simulink gives them; any other source is refused (as MATLAB refuses an unknown one).
% One row per block: source, BlockType, MaskType.
blocks = {
  'built-in/Subsystem',           'SubSystem',  ''
  'simulink/Sources/In1',         'Inport',     ''
  'simulink/Sinks/Out1',          'Outport',    ''
  'simulink/Sinks/Terminator',    'Terminator', ''
  'simulink/Sources/Constant',    'Constant',   ''
  'xbsIndex_r4/Gateway In',       'SubSystem',  'Xilinx Gateway In Block'
  'xbsIndex_r4/Gateway Out',      'SubSystem',  'Xilinx Gateway Out Block'
  'xbsIndex_r4/Logical',          'SubSystem',  'Xilinx Logical Block'
  'xbsIndex_r4/Counter',          'SubSystem',  'Xilinx Counter Block'
  'xps_library/software_register', 'SubSystem', 'xps:sw_reg'
};
k = find(strcmp(blocks(:, 1), src), 1);
if isempty(k)
  error('shim:add_block', 'There is no block named ''%s''', src);
end
block_type = blocks{k, 2};
mask_type = blocks{k, 3};
end
