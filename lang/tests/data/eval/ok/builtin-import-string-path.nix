import (toString ./lib/number.nix)
