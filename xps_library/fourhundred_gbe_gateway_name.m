function name = fourhundred_gbe_gateway_name(block_path, port)
% FOURHUNDRED_GBE_GATEWAY_NAME  The gateway (and top-level signal) name of one port:
%   '<model>_<subsystems>_<block>_<port>', the block path with '/' and blanks as '_'
%   (the yellow block's fullname). The result must be a Verilog identifier.
name = [regexprep(block_path, '[/ ]', '_') '_' port];
if isempty(regexp(name, '^[A-Za-z_][A-Za-z0-9_]*$', 'once'))
  error('fourhundred_gbe:name', ['gateway name %s (block %s, port %s) is not a valid ' ...
        'identifier: name the model and blocks with letters, digits and _ only'], ...
        fourhundred_gbe_repr(name), fourhundred_gbe_repr(block_path), port);
end
end
