function port = fourhundred_gbe_port_of_gateway(gateway_name, ports)
% FOURHUNDRED_GBE_PORT_OF_GATEWAY  Which port a gateway inside the block belongs to: the
%   longest port name that is the whole gateway name or its '_<port>' suffix; '' if none.
%   (A renamed block or model leaves the suffix, so renaming again stays correct.)
port = '';
for k = 1:numel(ports)
  p = ports{k};
  n = numel(p);
  hit = strcmp(gateway_name, p) || (numel(gateway_name) > n && ...
        strcmp(gateway_name(end-n:end), ['_' p]));
  if hit && n > numel(port)
    port = p;
  end
end
end
