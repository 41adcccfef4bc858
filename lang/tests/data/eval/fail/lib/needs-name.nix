{ name }: name
