let lib = toString ./lib; in [
  (builtins.pathExists "${lib}/data.txt/.")
  (builtins.pathExists "${lib}/nonexistent/..")
  (builtins.pathExists "${lib}//data.txt")
  (builtins.pathExists "${lib}/data.txt/")
  (builtins.pathExists "${lib}/")
  (builtins.pathExists "${lib}/./tree/../data.txt")
  (builtins.pathExists "${lib}/tree/link/")
  (builtins.pathExists (./lib + "/data.txt/"))
]
