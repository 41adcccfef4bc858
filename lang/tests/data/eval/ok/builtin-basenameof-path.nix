baseNameOf ./lib/data.txt
