function s = shim_state(new_state)
% SHIM_STATE  The recording Simulink stand-in's state: blocks (a containers.Map from
%   path to a struct of parameters, plus the fields SourceBlock and Name), lines and a
%   log of every call. shim_state('reset') clears it. Tests only: this checks that our
%   scripts make the calls we expect, not that MATLAB accepts them.
persistent state
if nargin == 1
  if ischar(new_state) && strcmp(new_state, 'reset')
    state = struct('blocks', containers.Map(), 'lines', {{}}, 'log', {{}}, 'systems', {{}}, ...
                   'saved', {{}}, 'next_line', 0);
  else
    state = new_state;
  end
end
if isempty(state)
  state = struct('blocks', containers.Map(), 'lines', {{}}, 'log', {{}}, 'systems', {{}}, ...
                 'saved', {{}}, 'next_line', 0);
end
s = state;
end
