{
  description = "a website";
  requires = { collected, ... }: if collected ? ports then [ "networking" ] else [ ];
}
