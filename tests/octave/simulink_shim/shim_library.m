function [block_type, mask_type] = shim_library(src)
% SHIM_LIBRARY  The library blocks the scripts may add, with the BlockType and MaskType
%   Simulink gives them; any other source is refused (as MATLAB refuses an unknown one).
switch src
  case 'built-in/Subsystem'
    block_type = 'SubSystem'; mask_type = '';
  case 'simulink/Sources/In1'
    block_type = 'Inport'; mask_type = '';
  case 'simulink/Sinks/Out1'
    block_type = 'Outport'; mask_type = '';
  case 'simulink/Sinks/Terminator'
    block_type = 'Terminator'; mask_type = '';
  case 'simulink/Sources/Constant'
    block_type = 'Constant'; mask_type = '';
  case 'xbsIndex_r4/Gateway In'
    block_type = 'SubSystem'; mask_type = 'Xilinx Gateway In Block';
  case 'xbsIndex_r4/Gateway Out'
    block_type = 'SubSystem'; mask_type = 'Xilinx Gateway Out Block';
  case 'xbsIndex_r4/Logical'
    block_type = 'SubSystem'; mask_type = 'Xilinx Logical Block';
  case 'xbsIndex_r4/Counter'
    block_type = 'SubSystem'; mask_type = 'Xilinx Counter Block';
  case 'xps_library/software_register'
    block_type = 'SubSystem'; mask_type = 'xps:sw_reg';
  otherwise
    error('shim:add_block', 'There is no block named ''%s''', src);
end
end
