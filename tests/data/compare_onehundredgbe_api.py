"""FourHundredGbe against casperfpga's OneHundredGbe: public names, kinds and signatures.

Run with the real casperfpga installed; prints ``RESULT <json>`` listing every public
name of OneHundredGbe (with its TenGbe/Gbe/Memory/Bitfield bases) and instance attribute
that FourHundredGbe lacks, has as another kind of member, or offers with other
parameters (names, order, defaults). Parameters FourHundredGbe adds after casperfpga's,
each with a default, are extras and allowed.
"""

import inspect
import json
import sys

from casperfpga.onehundredgbe import OneHundredGbe

from casperfpga_ext.gbe import FourHundredGbe


def kind(cls: type, name: str) -> tuple:
    for klass in cls.__mro__:
        if name in vars(klass):
            member = vars(klass)[name]
            if isinstance(member, property):
                return "property", None
            if isinstance(member, (classmethod, staticmethod)):
                return type(member).__name__, inspect.signature(member.__func__)
            if inspect.isfunction(member):
                return "method", inspect.signature(member)
            return "attribute", None
    return None, None


def params(signature: inspect.Signature) -> list:
    return [
        (p.name, str(p.kind), repr(p.default) if p.default is not p.empty else None)
        for p in signature.parameters.values()
    ]


class Parent:
    host = "board"

    def read(self, *args, **kwargs):
        raise RuntimeError("no board")


def main() -> int:
    missing, other_kind, other_params = [], [], []
    names = sorted(n for n in dir(OneHundredGbe) if not n.startswith("_"))
    for name in names:
        ref_kind, ref_sig = kind(OneHundredGbe, name)
        our_kind, our_sig = kind(FourHundredGbe, name)
        if our_kind is None:
            missing.append(name)
        elif our_kind != ref_kind:
            other_kind.append([name, ref_kind, our_kind])
        elif ref_sig is not None:
            ref, ours = params(ref_sig), params(our_sig)
            extras = ours[len(ref) :]
            if ours[: len(ref)] != ref or any(p[2] is None and "VAR" not in p[1] for p in extras):
                other_params.append([name, str(ref_sig), str(our_sig)])
    ref_attrs = set(vars(OneHundredGbe(Parent(), "gbe0", 0, 0x10000, None)))
    our_attrs = set(vars(FourHundredGbe(Parent(), "gbe0", 0, 0x10000, None)))
    result = {
        "checked": names,
        "missing": missing,
        "other_kind": other_kind,
        "other_params": other_params,
        "missing_attributes": sorted(a for a in ref_attrs - our_attrs if not a.startswith("_")),
    }
    print("RESULT " + json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
