{
  description = [ "a" "website" ];
}
